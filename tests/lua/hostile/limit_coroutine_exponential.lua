-- expect: EINVAL|ETIMEOUT C stack overflow|timed out
-- timeout_ms: 200
-- limit coroutine exponential: the same with coroutine.resume as catcher;
-- each resume nests on the C stack, so the C stack budget usually ends it
-- first (on slow builds the clock may)

function run()
    local function g()
        coroutine.resume(coroutine.create(g))
        return 1 + g()
    end
    return g()
end
