-- gzip_json.lua: sample-mode ETL that stores every JSON member gzip'ed, as
-- WebDataset's random-access readers recommend (faqs/0331): "x.json" becomes
-- "x.json.gz", which webdataset decodes transparently (gunzip, then JSON).
-- Members that are not JSON are left alone. etl_args may set the level:
-- {"level": 9} (default 6).
--
--   shale etl init --name gzip-json --code gzip_json.lua --mode sample

function transform_sample(sample, ctx)
    local level = 6
    if type(ctx.args) == "table" and type(ctx.args.level) == "number" then
        level = ctx.args.level
    end
    local out = { __key__ = sample.__key__ }
    for ext, data in pairs(sample) do
        if ext ~= "__key__" then
            if ext == "json" or shale.endswith(ext, ".json") then
                out[ext .. ".gz"] = shale.gzip(data, level)
            else
                out[ext] = data
            end
        end
    end
    return out
end
