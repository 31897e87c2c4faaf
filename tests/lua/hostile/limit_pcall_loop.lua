-- expect: ETIMEOUT timed out
-- timeout_ms: 200
-- limit pcall loop

function run()
    while true do pcall(function() while true do end end) end
end
