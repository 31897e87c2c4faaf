-- compress.lua: object-mode ETL that gzips an object (etl_args "decompress"
-- reverses it). The AIStore "compress" transformer, without a container.
--   shale etl init --name compress --code compress.lua
--   shale etl bucket compress ais://logs ais://logs-gz --ext '{log:log.gz}' --wait

function transform(data, ctx)
    if ctx.args == "decompress" then
        return shale.gunzip(data)
    end
    return shale.gzip(data)
end
