# Shared by compare and check: finds a Python that has SQLAlchemy and a Node
# that has generic-pool installed (npm ci in scripts/reference), or explains.
# Sets PYTHON, NODE and REF (this directory).

REF=$(cd "$(dirname "$0")" && pwd)

find_python() {
	for p in ${PYTHON:-} ${WARDPOOL_PYTHON:-} python3 /usr/bin/python3; do
		if "$p" -c 'import sqlalchemy.pool' >/dev/null 2>&1; then
			PYTHON=$p
			return 0
		fi
	done
	echo "$(basename "$0"): no python3 with SQLAlchemy; on Debian: apt-get install python3-sqlalchemy (or set PYTHON to one)" >&2
	return 1
}

find_node() {
	NODE=${NODE:-node}
	if ! "$NODE" --version >/dev/null 2>&1; then
		echo "$(basename "$0"): no node; install Node 18 or later (or set NODE)" >&2
		return 1
	fi
	if [ ! -f "$REF/node_modules/generic-pool/package.json" ]; then
		echo "$(basename "$0"): generic-pool is not installed; run: (cd scripts/reference && npm ci)" >&2
		return 1
	fi
}
