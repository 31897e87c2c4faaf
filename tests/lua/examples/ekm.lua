-- Example ishard EKM rule: route samples to shard families by class,
-- with a deterministic hash spread for the unknown ones.

local families = { ["0"] = "cats", ["1"] = "dogs" }

function shard_for(key, sample)
    local cls = sample and sample.cls
    if cls and families[cls] then
        return families[cls]
    end
    local h = shale.xxhash(key)
    return "other-" .. (tonumber(h:sub(-2), 16) % 4)
end
