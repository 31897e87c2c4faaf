-- expect: ETIMEOUT timed out
-- timeout_ms: 200
-- limit xpcall exponential: the same with xpcall as catcher

function run()
    local function g() xpcall(g, function(e) return e end) return 1 + g() end
    return g()
end
