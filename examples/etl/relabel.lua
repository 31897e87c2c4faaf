-- relabel.lua: sample-mode ETL that rewrites each sample's class label.
--
-- The mapping comes in etl_args as JSON, e.g.
--   curl -L "$AIS_ENDPOINT/v1/objects/pets/shard-000.tar?etl_name=relabel&etl_args=%7B%221%22:%220%22%7D"
--   shale etl object relabel ais://pets/shard-000.tar out.tar --args '{"1":"0","2":"0","drop":"7"}'
-- Keys are old labels, values new ones; a value of "drop" drops the sample.
-- Labels not in the mapping are kept. Samples without a .cls member pass through.
--
--   shale etl init --name relabel --code relabel.lua --mode sample

function transform_sample(sample, ctx)
    local map = ctx.args
    if type(map) ~= "table" or sample.cls == nil then
        return sample
    end
    local old = shale.trim(sample.cls)
    local new = map[old]
    if new == "drop" then
        return nil
    end
    if new ~= nil then
        sample.cls = tostring(new)
    end
    return sample
end
