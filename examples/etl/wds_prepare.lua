-- wds_prepare.lua: the WebDataset preparation ETL (AIStore's Python
-- "webdataset" transformer, decode -> transform -> re-encode each sample)
-- redone for a Lua sandbox. Image decoding and pixel transforms (resize,
-- crop, normalise) need image codecs that a sandboxed Lua state does not
-- have, so they stay in the data loader; everything else that ETL did per
-- sample runs here, next to the data:
--   * drops incomplete samples (no image, or no label when one is required)
--   * lower-cases extensions and maps jpeg -> jpg
--   * normalises the class label to a bare integer ("3\n" -> "3")
--   * adds a JSON member with the sample's metadata: key, label, image
--     extension and size, and the image's MD5 for integrity checks
--
-- etl_args (JSON, optional): {"require_label": true, "classes": ["cat", "dog"]}
--   classes: map a text label ("dog") to its index (1) when labels are names.
--
--   shale etl init --name wds-prepare --code wds_prepare.lua --mode sample
--   shale etl bucket wds-prepare ais://pets-shards ais://pets-ready --wait

local images = { jpg = true, png = true, webp = true, gif = true, bmp = true, tif = true, tiff = true }

function transform_sample(sample, ctx)
    local args = type(ctx.args) == "table" and ctx.args or {}
    local out = { __key__ = sample.__key__ }
    for ext, data in pairs(sample) do
        if ext ~= "__key__" then
            local e = string.lower(ext)
            if e == "jpeg" then
                e = "jpg"
            end
            out[e] = data
        end
    end
    local img_ext
    for e in pairs(images) do
        if out[e] ~= nil then
            img_ext = e
            break
        end
    end
    if img_ext == nil then
        shale.log("dropping " .. sample.__key__ .. ": no image member")
        return nil
    end
    local label = out.cls and shale.trim(out.cls) or nil
    if label ~= nil and type(args.classes) == "table" and tonumber(label) == nil then
        for i, name in ipairs(args.classes) do
            if name == label then
                label = tostring(i - 1)
            end
        end
    end
    if label == nil and args.require_label then
        shale.log("dropping " .. sample.__key__ .. ": no label")
        return nil
    end
    if label ~= nil then
        if tonumber(label) == nil then
            error("sample " .. sample.__key__ .. ": label '" .. label .. "' is not a number; pass etl_args " ..
                  "{\"classes\": [...]} to map names to indices")
        end
        out.cls = label
    end
    out.json = shale.json.encode({
        key = sample.__key__,
        cls = label and tonumber(label) or shale.json.null,
        image = img_ext,
        image_bytes = #out[img_ext],
        md5 = shale.md5(out[img_ext]),
        shard = ctx.name,
    })
    return out
end
