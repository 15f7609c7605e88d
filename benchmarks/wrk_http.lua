-- The wrk script of benchmarks/bench_http.py (run with as many threads as connections,
-- so that each thread has one connection and sends its requests one after another).
--
--   wrk -t N -c N -d 3s -s benchmarks/wrk_http.lua URL -- post PATH BODY_FILE
--       the same POST with a JSON body, over and over
--   wrk -t N -c N -d 3s -s benchmarks/wrk_http.lua URL -- get PATH
--       the same GET, over and over
--   wrk -t N -c N -d 3s -s benchmarks/wrk_http.lua URL -- actions DIR
--       session actions: thread n sends the lines of DIR/n.txt in order, each
--       "path TAB seat token TAB JSON body", the legal moves of its sessions' games
--
-- done() prints one line: "wrk-result " and a JSON object of the run's figures.

local threads = {}

function setup(thread)
   threads[#threads + 1] = thread
   thread:set("id", #threads)
end

local function read_file(path)
   local file = assert(io.open(path, "rb"))
   local text = file:read("*a")
   file:close()
   return text
end

function init(args)
   if args[1] == "get" then
      wrk.path = args[2]
      return
   end
   if args[1] == "post" then
      -- No request() of our own: wrk formats this request once and sends it every time.
      wrk.method = "POST"
      wrk.path = args[2]
      wrk.body = read_file(args[3])
      wrk.headers["Content-Type"] = "application/json"
      return
   end
   assert(args[1] == "actions", "usage: -- get PATH | -- post PATH BODY_FILE | -- actions DIR")
   local moves = {}
   for line in io.lines(args[2] .. "/" .. id .. ".txt") do
      local path, token, body = line:match("^([^\t]*)\t([^\t]*)\t(.*)$")
      moves[#moves + 1] = wrk.format("POST", path, {
         ["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. token}, body)
   end
   local current = 1
   exhausted = false
   -- A move is sent until its answer has come, and only then the next one: wrk asks the
   -- first thread for one request more than it sends (to check the script), and sends a
   -- request again on a new connection when the old one broke before the answer.
   request = function()
      return moves[current]
   end
   response = function(status, headers, body)
      current = current + 1
      if current > #moves then
         exhausted = true
         wrk.thread:stop()
      end
   end
end

function done(summary, latency, requests)
   local errors = summary.errors
   local exhausted_threads = 0
   for _, thread in ipairs(threads) do
      if thread:get("exhausted") then
         exhausted_threads = exhausted_threads + 1
      end
   end
   io.write(string.format(
      'wrk-result {"requests": %d, "duration_us": %d, "p50_us": %d, "p99_us": %d, "status_errors": %d, '
         .. '"socket_errors": %d, "exhausted_threads": %d}\n',
      summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), errors.status,
      errors.connect + errors.read + errors.write + errors.timeout, exhausted_threads))
end
