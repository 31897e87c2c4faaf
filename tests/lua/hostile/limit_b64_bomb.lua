-- expect: ETOOBIG memory limit
-- timeout_ms: 30000
-- mem_mb: 16
-- limit b64 bomb

function run()
    local s = string.rep("x", 6e6)
    return #shale.base64.encode(shale.base64.encode(s))
end
