-- expect: ETOOBIG memory limit
-- mem_mb: 16
-- limit b64 bomb

function run()
    local s = string.rep("x", 6e6)
    return #shale.base64.encode(shale.base64.encode(s))
end
