-- expect: ETOOBIG memory limit
-- timeout_ms: 30000
-- mem_mb: 16
-- limit gzip bomb: each gunzip output is charged to the call

function run()
    local z = shale.gzip(string.rep("\0", 4e6))
    local parts = {}
    -- identical strings are interned once; make every copy distinct
    for i = 1, 100 do parts[i] = i .. shale.gunzip(z) end
    return #parts
end
