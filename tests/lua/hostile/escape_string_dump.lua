-- expect: EINVAL attempt to call field 'dump'
-- escape string dump

function run()
    return string.dump(run)
end
