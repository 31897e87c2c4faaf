-- expect: ETIMEOUT timed out
-- timeout_ms: 200
-- limit pattern find

function run()
    -- backtracking runs in C, out of reach of the instruction hook
    local s = string.rep("a", 5000)
    local r = string.find(s, ".-.-.-.-b")
    return r
end
