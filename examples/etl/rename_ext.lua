-- rename_ext.lua: sample-mode ETL that renames member extensions, e.g. to
-- make a dataset's ".jpeg"/".JPG" members all ".jpg" and ".label" ".cls".
--
-- etl_args (JSON): {"jpeg": "jpg", "JPG": "jpg", "label": "cls"}
-- Without args the default map below is used. If two members of a sample
-- would end up with the same extension, the sample is reported as an error
-- (WebDataset rejects duplicate extensions in a sample).
--
--   shale etl init --name rename-ext --code rename_ext.lua --mode sample

local default = { jpeg = "jpg", JPG = "jpg", JPEG = "jpg", PNG = "png", label = "cls" }

function transform_sample(sample, ctx)
    local map = type(ctx.args) == "table" and ctx.args or default
    local out = { __key__ = sample.__key__ }
    for ext, data in pairs(sample) do
        if ext ~= "__key__" then
            local new = map[ext] or ext
            if out[new] ~= nil then
                error("sample " .. sample.__key__ .. ": renaming ." .. ext .. " collides with ." .. new)
            end
            out[new] = data
        end
    end
    return out
end
