-- expect: OK nil
-- timeout_ms: 2000
-- limit plain find

function run()
    -- quadratic for a naive scan; memmem is linear
    local s = string.rep("a", 4000000)
    local p = string.rep("a", 2000000) .. "b"
    return tostring(string.find(s, p, 1, true))
end
