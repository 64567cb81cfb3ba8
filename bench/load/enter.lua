-- every request is a new user joining the line
counter = 0
run = os.time()
nextThread = 0
setup = function(thread) thread:set("tid", nextThread); nextThread = nextThread + 1 end
request = function()
  counter = counter + 1
  return wrk.format("POST", "/queue/enter", {["X-User-Id"] = "n-" .. run .. "-" .. tid .. "-" .. counter}, "")
end
