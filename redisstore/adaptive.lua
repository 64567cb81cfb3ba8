-- A room's adaptive setting as stored ('targetMs:min:max', '' or nil when
-- off: waitroom.Adaptive.String) and the effective rate within its bounds.
-- clampRate returns the rate's text within the bounds, or nil when off.
local function clampRate(adaptive, rate)
  if not adaptive or adaptive == '' then
    return nil
  end
  local lo, hi = string.match(adaptive, '^%d+:([^:]+):([^:]+)$')
  -- '%.9f', never an exponent: the embedded store's tonumber refuses "1e+06".
  return string.format('%.9f', math.min(math.max(tonumber(rate), tonumber(lo)), tonumber(hi)))
end

-- withRate: hot with another rate (the adaptive rate moved).
local function withRate(hot, rate)
  return string.sub(hot, 1, 1) .. rate .. string.match(hot, '^.[^:]*(:.*)$')
end
