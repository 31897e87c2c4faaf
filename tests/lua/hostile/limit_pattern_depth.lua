-- expect: EINVAL pattern too complex
-- limit pattern depth: matcher recursion is bounded

function run()
    return string.match(string.rep("a", 500), string.rep("a?", 500))
end
