-- md5.lua: object-mode ETL returning the MD5 of each object as hex (the
-- classic AIStore "md5" transformer). Useful to verify a dataset in place:
--   shale etl init --name md5-hex --code md5.lua
--   curl -L "$AIS_ENDPOINT/v1/objects/imgs/cat.jpg?etl_name=md5-hex"

function transform(data, ctx)
    return shale.md5(data)
end
