package cost

import (
	"fmt"
	"io/fs"

	"github.com/waitroom/waitroom/web"
)

// APIAnswerBytes is what one API answer sends a viewer through CloudFront:
// response headers (content type, date, cache and security headers, the
// ticket cookie) and a position body with its ticket. An estimate rounded
// up from the answers of the local runner's tests, not a measurement of
// CloudFront; the line's answers (no ticket, no cookie) are smaller and
// are counted at this size too, an upper bound.
const APIAnswerBytes = 700

// pageFiles is the waiting page as CloudFront serves it: the files under
// web/static (the ones the stack uploads) and the config.json it writes.
func pageFiles() (files int, bytes float64, err error) {
	err = fs.WalkDir(web.Files(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files++
		bytes += float64(info.Size())
		return nil
	})
	return files + 1, bytes, err // + waitroom/config.json
}

// pageIdleItems: a distribution has no monthly fee, the bucket stores the
// page (the files of web/static, counted by pageFiles); the deployment's
// custom-resource functions run only when the stack is deployed or deleted.
func pageIdleItems(inv Inventory, p Prices) ([]Item, error) {
	if inv.Distributions == 0 {
		return nil, nil
	}
	_, bytes, err := pageFiles()
	if err != nil {
		return nil, err
	}
	return []Item{
		{"CloudFront distribution (waiting page)", fmt.Sprintf("%d: no monthly fee, billed by request and byte", inv.Distributions), 0},
		{"S3 storage (waiting page)", fmt.Sprintf("%.0f bytes × %s", bytes, money(p.S3StorageGBMonth.USD)), bytes / gb * p.S3StorageGBMonth.USD},
	}, nil
}

// pagePerMillion: every visitor loads the page once and sends every API
// request through the distribution (same origin), so CloudFront bills the
// page's files and all of the API's requests and answers, the line fetches
// it answers from its copy among them (Walk.ViewerRequests), at the rates of
// the region whose edges serve the viewers under the distribution's price
// class. Origin fetches from S3 and API Gateway to CloudFront carry no
// transfer charge. Page bytes are counted uncompressed (an upper bound:
// CloudFront compresses).
func pagePerMillion(inv Inventory, w Walk, opt Options) ([]Item, error) {
	if inv.Distributions == 0 {
		return nil, nil
	}
	files, bytes, err := pageFiles()
	if err != nil {
		return nil, err
	}
	viewers, err := ViewerRegion(opt.Viewers)
	if err != nil {
		return nil, err
	}
	billed, served := BilledRegion(inv.PriceClass, viewers)
	where := fmt.Sprintf("viewers in %s, %s: %s rates", viewers.Key, inv.PriceClass, billed.Key)
	if !served {
		where += fmt.Sprintf(" (the class has no edge in %s; the nearest it has serves them, billed here at US rates, a lower bound)", viewers.Key)
	}
	req := float64(w.ViewerRequests())
	perVisitor := float64(files) + req
	out := bytes + req*APIAnswerBytes
	api := fmt.Sprintf("%d API requests", w.Requests())
	if w.LineFetches > 0 {
		api += fmt.Sprintf(" and %d line fetches", w.LineFetches)
	}
	return []Item{
		{"CloudFront HTTPS requests", fmt.Sprintf("%.0f a visitor: %d page files, %s; %s", perVisitor, files, api, where),
			Visitors * perVisitor * billed.HTTPSRequest.USD},
		{"CloudFront data transfer out", fmt.Sprintf("%.0f KB a visitor: the page (%.0f KB) and %.0f answers of ≤ %d B", out/1000, bytes/1000, req, APIAnswerBytes),
			Visitors * out / gb * billed.GB.USD},
	}, nil
}
