-- expect: ETOOBIG memory limit
-- mem_mb: 16
-- limit rep bomb

function run()
    return string.rep("x", 2^30)
end
