-- expect: EINVAL attempt to read undeclared global 'os'
-- escape os execute

function run()
    return os.execute("touch /tmp/shale-lua-escaped")
end
