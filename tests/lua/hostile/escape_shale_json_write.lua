-- expect: EINVAL attempt to modify read-only table 'shale.json'
-- escape shale json write

function run()
    shale.json.encode = nil
end
