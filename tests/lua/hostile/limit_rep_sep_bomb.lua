-- expect: ETOOBIG memory limit
-- timeout_ms: 30000
-- mem_mb: 16
-- limit rep sep bomb

function run()
    local s = string.rep("abcdefgh", 1e6)
    return string.rep(s, 100)
end
