-- Example ETL (WebDataset sample): drops samples without a .cls member,
-- renames jpg -> jpeg, adds a JSON member, keeps binary bytes untouched.

function transform_sample(sample, ctx)
    if not sample.cls then
        return nil
    end
    local out = { __key__ = sample.__key__ .. "-x" }
    out.jpeg = sample.jpg
    out["seg.png"] = sample["seg.png"]
    out.json = shale.json.encode({ key = sample.__key__, cls = tonumber(sample.cls),
                                   bucket = ctx.bucket, size = #sample.jpg })
    return out
end
