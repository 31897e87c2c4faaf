-- add_cls.lua: sample-mode ETL that adds the class label to every sample,
-- from a key -> class mapping passed in etl_args. The demo builds the
-- mapping from Oxford-IIIT Pets' annotations/list.txt
-- ("Abyssinian_1 1 1 1": image, class id, species, breed id):
--
--   shale etl init --name add-cls --code add_cls.lua --mode sample
--   shale etl bucket add-cls ais://pets ais://pets-train --args "$(cat classes.json)" --wait
--
-- Class ids in list.txt start at 1; the label written is 0-based, as
-- training code expects ({"Abyssinian_1": 1} -> cls "0"). Samples whose key
-- is not in the mapping are dropped and logged (shale etl view-logs add-cls).

function transform_sample(sample, ctx)
    local classes = ctx.args
    if type(classes) ~= "table" then
        error("add_cls needs etl_args: a JSON object mapping sample keys to class ids")
    end
    -- keys may carry directories ("train/Abyssinian_1"); list.txt has bare names
    local base = sample.__key__:match("([^/]+)$")
    local id = classes[base]
    if id == nil then
        shale.log("no class for " .. sample.__key__ .. "; dropped")
        return nil
    end
    sample.cls = tostring(tonumber(id) - 1)
    return sample
end
