-- filter_json.lua: sample-mode ETL that keeps only the samples whose JSON
-- member has a field with a wanted value.
--
-- etl_args (JSON): {"field": "split", "equals": "train"}   keep split == "train"
--                  {"field": "width", "min": 224}          keep width >= 224
-- A sample without a .json member, or whose JSON lacks the field, is dropped.
-- Nested fields use dots: {"field": "meta.source", "equals": "web"}.
--
--   shale etl init --name filter-json --code filter_json.lua --mode sample
--   shale etl bucket filter-json ais://shards ais://train-only --args '{"field":"split","equals":"train"}' --wait

local function lookup(doc, path)
    local v = doc
    for part in string.gmatch(path, "[^.]+") do
        if type(v) ~= "table" then
            return nil
        end
        v = v[part]
    end
    return v
end

function transform_sample(sample, ctx)
    local a = ctx.args
    if type(a) ~= "table" or type(a.field) ~= "string" then
        error("filter_json needs etl_args like {\"field\": \"split\", \"equals\": \"train\"}")
    end
    if sample.json == nil then
        return nil
    end
    local ok, doc = pcall(shale.json.decode, sample.json)
    if not ok then
        shale.log("skipping " .. sample.__key__ .. ": bad JSON: " .. tostring(doc))
        return nil
    end
    local v = lookup(doc, a.field)
    if v == nil then
        return nil
    end
    if a.equals ~= nil and v ~= a.equals then
        return nil
    end
    if a.min ~= nil and (type(v) ~= "number" or v < a.min) then
        return nil
    end
    if a.max ~= nil and (type(v) ~= "number" or v > a.max) then
        return nil
    end
    return sample
end
