-- expect: OK locked
-- escape strmeta value

function run()
    return getmetatable("")
end
