-- expect: ETOOBIG memory limit
-- timeout_ms: 30000
-- mem_mb: 16
-- limit rep bomb

function run()
    return string.rep("x", 2^30)
end
