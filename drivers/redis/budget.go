package redisward

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool/ward/shared"
)

// budgetScript is Store.Budget's script, the same algorithm as
// shared.MemStore's, step for step. KEYS: members (a sorted set, score: the
// moment the member's lease ends, in the server's milliseconds; a member
// past it has lapsed, and is dropped with its slots one TTL later), held (a
// hash: member → slots), want (a sorted set of members waiting below their
// share, score: when the wish lapses), rebuild (present, for one TTL, while
// the store relearns the counts after meeting a member it did not know
// holding slots), room (a hash: member → the Room its last reply gave it).
// ARGV: step, replica, budget, ttl in ms, the replica's own count,
// overwrite (1/0), borrow (1/0), unsure (1/0), the Room the replica
// brings back (BudgetOp.Room). It returns {granted, held, share, live,
// total, owed, room}.
//
// The clock is the server's (TIME), so that leases do not depend on the
// replicas' clocks agreeing. Redis 7 replicates a script's effects, not the
// script, which is what makes reading TIME before writing allowed.
var budgetScript = newScript(`local members, heldk, wantk, rebuild, roomk = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local step, me = ARGV[1], ARGV[2]
local budget, ttl, mine = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local overwrite, borrow, unsure = ARGV[6] == '1', ARGV[7] == '1', ARGV[8] == '1'
local brought = tonumber(ARGV[9])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local late = redis.call('ZRANGEBYSCORE', members, '-inf', now, 'WITHSCORES')
for i = 1, #late, 2 do
  local r = late[i]
  if tonumber(late[i + 1]) <= now - ttl then
    redis.call('ZREM', members, r)
    redis.call('HDEL', heldk, r)
    redis.call('HDEL', roomk, r)
  end
  redis.call('ZREM', wantk, r)
end
redis.call('ZREMRANGEBYSCORE', wantk, '-inf', now)
local known = false
if step == 'leave' then
  redis.call('ZREM', members, me)
  redis.call('HDEL', heldk, me)
  redis.call('HDEL', roomk, me)
  redis.call('ZREM', wantk, me)
else
  known = redis.call('ZSCORE', members, me)
  local lapsed = known and tonumber(known) <= now
  redis.call('ZADD', members, now + ttl, me)
  if (not known) and mine > 0 then
    redis.call('SET', rebuild, '1', 'PX', ttl)
  end
  if (not known) or lapsed or (step == 'renew' and overwrite) then
    redis.call('HSET', heldk, me, math.max(mine, 0))
  elseif step == 'return' or unsure then
    local was = tonumber(redis.call('HGET', heldk, me) or '0')
    local n = was
    if step == 'return' and n > 0 then n = n - 1 end
    if unsure then n = math.max(n, mine) end
    if n ~= was then redis.call('HSET', heldk, me, n) end
  end
end
local live = redis.call('ZCOUNT', members, '(' .. now, '+inf')
local share = 0
if live > 0 then share = math.floor(math.max(budget, 0) / live) end
local rooms = {}
local rv = redis.call('HGETALL', roomk)
for i = 1, #rv, 2 do rooms[rv[i]] = tonumber(rv[i + 1]) end
local held, total, others = {}, 0, 0
local kv = redis.call('HGETALL', heldk)
for i = 1, #kv, 2 do
  local n = tonumber(kv[i + 1])
  held[kv[i]] = n
  total = total + n
  if kv[i] ~= me then others = others + math.max(n, rooms[kv[i]] or 0) end
end
local wants = redis.call('ZRANGE', wantk, 0, -1)
local waiting, reserved, wanting = false, 0, false
for _, r in ipairs(wants) do
  if r == me then
    waiting = true
  else
    reserved = reserved + math.max(share - (held[r] or 0), 0)
    if (held[r] or 0) < share then wanting = true end
  end
end
if step ~= 'leave' and (not known) and brought > 0 then
  rooms[me] = math.max(math.min(brought, share, budget - others), 0)
  redis.call('HSET', roomk, me, rooms[me])
end
local rebuilding = redis.call('EXISTS', rebuild) == 1
local granted = 0
if step == 'lease' then
  local h = held[me] or 0
  local fits = h < share or (borrow and total + reserved < budget)
  if rebuilding then fits = h < math.min(rooms[me] or 0, share) end
  if total < budget and others + h < budget and fits then
    granted = 1
    redis.call('HINCRBY', heldk, me, 1)
    held[me] = h + 1
    total = total + 1
    redis.call('ZREM', wantk, me)
    waiting = false
  elseif h < share then
    redis.call('ZADD', wantk, now + ttl, me)
    waiting = true
  end
end
local h = held[me] or 0
local owed = 0
if wanting or total > budget then owed = math.max(h - share, 0) end
local room = h
if h >= share then
  room = h
elseif rebuilding then
  room = math.max(math.min(rooms[me] or 0, share), h)
elseif waiting or not borrow then
  room = math.max(math.min(share, budget - others), h)
elseif step ~= 'renew' then
  room = math.max(math.min(rooms[me] or 0, share), h)
end
if step ~= 'leave' then
  if rooms[me] ~= room then redis.call('HSET', roomk, me, room) end
  redis.call('PEXPIRE', members, 2 * ttl)
  redis.call('PEXPIRE', heldk, 2 * ttl)
  redis.call('PEXPIRE', wantk, 2 * ttl)
  redis.call('PEXPIRE', roomk, 2 * ttl)
end
return {granted, h, share, live, total, owed, room}`)

// Budget implements shared.Store: one script, one round trip (see
// budgetScript). The five keys are op.Key (which carries the hash tag)
// followed by ":members", ":held", ":want", ":rebuild" and ":room". The
// whole budget expires two TTLs after its last step, so a fleet that went
// away leaves nothing.
func (s *Store) Budget(ctx context.Context, op shared.BudgetOp) (shared.BudgetReply, error) {
	base := s.prefix + op.Key
	keys := []string{base + ":members", base + ":held", base + ":want", base + ":rebuild", base + ":room"}
	ttl := millis(max(op.TTL, time.Millisecond))
	cmd, err := run(ctx, s.p, budgetScript, redis.NewIntSliceCmd, keys,
		op.Step.String(), op.Replica, op.Budget, ttl, op.Held, flag(op.Overwrite), flag(op.Borrow), flag(op.Unsure), max(op.Room, 0))
	if err != nil {
		return shared.BudgetReply{}, err
	}
	v := cmd.Val()
	if len(v) != 7 {
		return shared.BudgetReply{}, fmt.Errorf("redisward: budget: unexpected reply %v", v)
	}
	return shared.BudgetReply{
		Granted: v[0] == 1, Held: int(v[1]), Share: int(v[2]), Live: int(v[3]),
		Total: int(v[4]), Owed: int(v[5]), Room: int(v[6]),
	}, nil
}

func flag(b bool) int {
	if b {
		return 1
	}
	return 0
}
