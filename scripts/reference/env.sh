# Shared by compare and check: finds a Python that has SQLAlchemy, a Node
# that has generic-pool installed (npm ci in scripts/reference) and a JDK
# with Apache Commons Pool 2's jar, or explains. Sets PYTHON, NODE, JAVA,
# JAVAC, COMMONS_POOL_JAR and REF (this directory); build_commons compiles
# the Commons Pool runner.

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

find_java() {
	JAVA=${JAVA:-${WARDPOOL_JAVA:-java}}
	JAVAC=${JAVAC:-$(dirname "$(command -v "$JAVA" || echo java)")/javac}
	COMMONS_POOL_JAR=${COMMONS_POOL_JAR:-${WARDPOOL_COMMONS_POOL_JAR:-/usr/share/java/commons-pool2.jar}}
	if ! "$JAVA" -version >/dev/null 2>&1 || ! "$JAVAC" -version >/dev/null 2>&1; then
		echo "$(basename "$0"): no java and javac; on Debian: apt-get install default-jdk-headless (or set JAVA and JAVAC)" >&2
		return 1
	fi
	if [ ! -f "$COMMONS_POOL_JAR" ]; then
		echo "$(basename "$0"): no $COMMONS_POOL_JAR; on Debian: apt-get install libcommons-pool2-java (or set COMMONS_POOL_JAR)" >&2
		return 1
	fi
}

# build_commons DIR compiles CommonsPoolRunner.java into DIR and sets
# COMMONS_CP, the class path that runs it. Nothing compiled is kept in the
# tree.
build_commons() {
	"$JAVAC" -d "$1" -cp "$COMMONS_POOL_JAR" "$REF/CommonsPoolRunner.java"
	COMMONS_CP=$1:$COMMONS_POOL_JAR
}
