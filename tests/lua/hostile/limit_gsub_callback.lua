-- expect: ETIMEOUT timed out
-- timeout_ms: 200
-- limit gsub callback

function run()
    return (("x"):rep(10):gsub("x", function() while true do end end))
end
