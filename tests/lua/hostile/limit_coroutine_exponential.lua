-- expect: EINVAL C stack overflow (coroutines or callbacks nested too deeply)
-- timeout_ms: 200
-- limit coroutine exponential: the same with coroutine.resume as catcher;
-- each resume nests on the C stack, so the C stack budget ends it first

function run()
    local function g()
        coroutine.resume(coroutine.create(g))
        return 1 + g()
    end
    return g()
end
