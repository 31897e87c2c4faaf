-- expect: ETIMEOUT timed out
-- timeout_ms: 200
-- limit pattern gsub

function run()
    local s = string.rep("a", 20000)
    local r = s:gsub("a*a*a*b", "x")
    return r
end
