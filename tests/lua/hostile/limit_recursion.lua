-- expect: EINVAL stack overflow
-- limit recursion

function run()
    local function f() return 1 + f() end
    return f()
end
