-- expect: EINVAL nested deeper than
-- limit return cycle

function run()
    local t = {}
    t.self = t
    return t
end
