-- expect: ETOOBIG output limit
-- max_output: 1024
-- limit output table

function run()
    local t = {}
    for i = 1, 1000 do t[i] = i end
    return t
end
