-- expect: EINVAL table already has a metatable
-- escape json array proxy

function run()
    shale.json.array(string)
end
