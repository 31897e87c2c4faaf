-- expect: ETOOBIG more than the output limit
-- max_output: 1024
-- limit output

function run()
    return string.rep("x", 4096)
end
