# The waiting page in a real browser (issue 11): the Go tests drive Debian's
# chromium with chromedp (localrun/browser_test.go). `make test` installs
# chromium when it is missing, as it does redis-server; without it the browser
# tests skip locally and fail under CI=true.
.PHONY: chromium screenshots

## chromium: make sure the browser tests can start a headless chromium
chromium:
	@$(call apt_install,chromium,chromium)
	@chromium --version 2>/dev/null

# The browser tests are Go tests: the browser must be there before they run.
test-go: chromium

## screenshots: docs/img/{waiting,ready,waiting-ko,branded,branded-ko,message,closed}.png from the browser tests (installs a Korean font when none is present)
screenshots: redis-server chromium
	@fc-list :lang=ko 2>/dev/null | grep -q . || $(call apt_get,fonts-nanum)
	@mkdir -p docs/img
	set -o pipefail; WAITROOM_SCREENSHOTS=$(CURDIR)/docs/img $(GO) test -count=1 -run '^TestBrowser' -v ./localrun | grep -E '^(--- |ok|FAIL|PASS)|saved'
