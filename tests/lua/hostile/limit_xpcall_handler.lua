-- expect: ETIMEOUT timed out
-- timeout_ms: 200
-- limit xpcall handler

function run()
    -- LuaJIT runs this handler with the hook marked active; the sandbox
    -- must not run it for its own timeout error
    local function spin() while true do end end
    while true do xpcall(spin, spin) end
end
