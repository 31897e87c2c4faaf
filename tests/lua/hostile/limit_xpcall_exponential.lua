-- expect: ETIMEOUT|EINVAL timed out|C stack overflow
-- timeout_ms: 200
-- limit xpcall exponential: the same with xpcall as catcher (each xpcall
-- nests on the C stack: the clock or the C stack budget ends it)

function run()
    local function g() xpcall(g, function(e) return e end) return 1 + g() end
    return g()
end
