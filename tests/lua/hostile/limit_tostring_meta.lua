-- expect: ETIMEOUT timed out
-- timeout_ms: 200
-- limit tostring meta

function run()
    return tostring(setmetatable({}, { __tostring = function() while true do end end }))
end
