-- expect: EINVAL attempt to read undeclared global 'newproxy'
-- escape newproxy

function run()
    local u = newproxy(true)
    getmetatable(u).__gc = function() while true do end end
end
