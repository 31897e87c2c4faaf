-- expect: OK done
-- mem_mb: 16
-- timeout_ms: 20000
-- limit garbage churn: 300 MB of short-lived 1 MB strings under a 16 MiB
-- cap; uncollected garbage counts against the cap, so the collector must
-- keep up

function run()
    for i = 1, 300 do
        local s = string.rep("x", 1e6) .. i
    end
    local keep = string.rep("k", 2e6)
    for i = 1, 50 do
        local s = keep:upper()
    end
    return "done"
end
