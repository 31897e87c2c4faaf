-- expect: EINVAL C stack overflow (coroutines or callbacks nested too deeply)
-- limit gsub recursion

function run()
    local function f(s) return (s:gsub(".", f)) end
    return f("ab")
end
