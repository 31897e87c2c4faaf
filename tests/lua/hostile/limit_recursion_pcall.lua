-- expect: OK 1
-- limit recursion pcall: a stack overflow caught by pcall unwinds cleanly
-- and the script may go on

function run()
    local function f(n)
        pcall(f, n + 1)
        return n
    end
    return tostring(f(1))
end
