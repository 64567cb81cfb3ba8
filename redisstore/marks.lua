-- Shared by the scripts that read the wait marks (admit.lua, status.lua),
-- prepended after admission.lua: not by enter.lua, which writes the marks
-- but never reads one back (every function a script defines is a closure
-- made at every call).

-- A pre-queue mark's member: the opening second, told apart from the
-- per-second marks of enter so that neither overwrites the other.
local function markSecond(member)
  return tonumber(string.match(member, '^%d+'))
end
