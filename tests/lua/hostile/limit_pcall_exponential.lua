-- expect: ETIMEOUT timed out
-- timeout_ms: 200
-- limit pcall exponential: almost all of the time is spent within a few
-- slots of LuaJIT's stack limit, where LuaJIT cannot call the count hook;
-- the checkpoint in pcall must stop it

function run()
    local function g() pcall(g) return 1 + g() end
    return g()
end
