-- expect: EINVAL attempt to call method 'dump'
-- escape string dump method

function run()
    return (""):dump()
end
