-- expect: ETIMEOUT timed out
-- timeout_ms: 200
-- limit sort comparator

function run()
    local t = {3, 2, 1}
    table.sort(t, function(a, b) while true do end end)
end
