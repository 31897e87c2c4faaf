-- expect: ETOOBIG memory limit
-- timeout_ms: 30000
-- mem_mb: 16
-- limit table str bomb

function run()
    local t = {}
    for i = 1, 1e9 do t[#t + 1] = tostring(i) .. "-" .. i end
end
