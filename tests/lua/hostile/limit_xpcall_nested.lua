-- expect: ETIMEOUT timed out
-- timeout_ms: 200
-- limit xpcall nested

function run()
    local function spin() while true do end end
    local function h() return xpcall(spin, h) end
    while true do xpcall(spin, h) end
end
