-- expect: EINVAL C stack overflow (coroutines or callbacks nested too deeply)
-- limit coroutine nesting

function run()
    local function f() return coroutine.wrap(f)() end
    return f()
end
