-- GET /queue/position for users picked at random among those fill entered
request = function()
  return wrk.format("GET", "/queue/position", {["X-User-Id"] = "p" .. math.random(0, 99999)}, nil)
end
