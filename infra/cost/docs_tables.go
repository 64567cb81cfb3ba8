package cost

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// priceRow is one row of the price table: per says per how many units
// the price is written (1, 10,000, a million).
type priceRow struct {
	label string
	pr    Price
	per   float64
}

// pricesDoc is the price table, from the Prices the model uses.
func pricesDoc(p Prices) string {
	var rows [][]string
	for _, r := range []priceRow{
		{"Lambda requests", p.LambdaRequest, 1e6}, {"Lambda duration, arm64", p.LambdaArmGBSecond, 1}, {"Lambda duration, x86_64", p.LambdaX86GBSecond, 1},
		{"API Gateway HTTP API", p.HTTPAPIRequest, 1e6},
		{"ElastiCache Serverless Valkey storage", p.ValkeyStorageGBHour, 1}, {"ElastiCache Serverless Valkey ECPU", p.ValkeyECPU, 1e6},
		{"ElastiCache Serverless Redis OSS storage", p.RedisStorageGBHour, 1}, {"ElastiCache Serverless Redis OSS ECPU", p.RedisECPU, 1e6},
		{"ElastiCache Serverless snapshots", p.SnapshotGBMonth, 1},
		{"CloudWatch custom metrics", p.CustomMetricMonth, 1}, {"CloudWatch alarms", p.AlarmMetricMonth, 1},
		{"CloudWatch alarms, high resolution", p.HighResAlarmMetricMonth, 1}, {"CloudWatch composite alarms", p.CompositeAlarmMonth, 1},
		{"CloudWatch dashboards", p.DashboardMonth, 1}, {"CloudWatch Logs ingestion", p.LogsIngestGB, 1}, {"CloudWatch Logs storage", p.LogsStorageGBMonth, 1},
		{"Interface VPC endpoint", p.InterfaceEndpointAZHour, 1}, {"Interface VPC endpoint data", p.InterfaceEndpointGB, 1},
		{"NAT gateway", p.NATGatewayHour, 1}, {"NAT gateway data", p.NATGatewayGB, 1}, {"Public IPv4 address", p.PublicIPv4Hour, 1},
		{"Secrets Manager", p.SecretMonth, 1}, {"KMS", p.KMSKeyMonth, 1}, {"KMS requests", p.KMSRequest, 1e4}, {"AWS Budgets actions", p.BudgetActionDay, 1},
		{"S3 Standard storage", p.S3StorageGBMonth, 1},
		{"AWS WAF web ACL", p.WAFWebACLMonth, 1}, {"AWS WAF rule", p.WAFRuleMonth, 1}, {"AWS WAF requests", p.WAFRequest, 1e6},
		{"DynamoDB writes", p.DynamoDBWriteUnit, 1e6}, {"DynamoDB storage", p.DynamoDBStorageGBMonth, 1}, {"DynamoDB point-in-time recovery", p.DynamoDBPITRGBMonth, 1},
		{"SQS standard requests", p.SQSStandardRequest, 1e6}, {"SQS FIFO requests", p.SQSFifoRequest, 1e6},
		{"Data out to the internet", p.InternetOutGB, 1},
		{"Step Functions Express requests", p.StepFunctionsExpressRequest, 1e6}, {"Step Functions Express duration", p.StepFunctionsExpressGBSecond, 1},
	} {
		rows = append(rows, []string{r.label, fmt.Sprintf("%g", math.Round(r.pr.USD*r.per*1e10)/1e10), per(r.per) + r.pr.Unit, source(r.pr)})
	}
	var cf [][]string
	for _, r := range CloudFrontRegions {
		var classes []string
		for _, c := range []string{"PriceClass_100", "PriceClass_200"} {
			if slices.Contains(PriceClasses[c], r.Key) {
				classes = append(classes, c)
			}
		}
		cf = append(cf, []string{fmt.Sprintf("%s (`%s`)", r.Name, r.Key), fmt.Sprintf("%.4f", r.HTTPSRequest.USD*1e4), fmt.Sprintf("%.3f", r.GB.USD),
			strings.Join(append(classes, "PriceClass_All"), ", "), source(r.HTTPSRequest) + "; per GB: " + source(r.GB)})
	}
	return fmt.Sprintf("%s, on demand, first tier, taken %s:\n\n%s\nCloudFront, by the region of the edge that serves the viewer:\n\n%s",
		p.Region, p.Taken, mdTable([]string{"price", "USD", "unit", "source"}, rows),
		mdTable([]string{"region", "HTTPS requests, per 10,000", "GB out, first 10 TB", "price classes", "source"}, cf))
}

func per(n float64) string {
	switch n {
	case 1e6:
		return "per million: "
	case 1e4:
		return "per 10,000: "
	}
	return ""
}

func source(pr Price) string {
	if pr.Unconfirmed {
		return pr.Source + ", **unconfirmed**"
	}
	return pr.Source
}

// unknownsDoc: the figures of "What the model does not know".
func unknownsDoc(def Priced) string {
	p := USEast1
	alarms, metrics := len(def.Inv.Alarms), 0
	for _, a := range def.Inv.Alarms {
		metrics += a.Metrics
	}
	answers := float64(def.R.RequestsPerVisitor)
	return fmt.Sprintf("- **Whether a metric-math alarm is billed per metric it reads.** The model counts it per metric, which makes "+
		"the default configuration's %d alarms (%d metrics) %s a month; at one price per alarm they would be %s.\n"+
		"- **Data transfer without the page:** the API's answers to browsers leave AWS at %s per GB beyond the free 100 GB a month: for %.0f "+
		"answers of at most %d B a visitor (`cost.APIAnswerBytes`), at most %s per million visitors, not in the bills. With the page, "+
		"CloudFront's transfer is counted.\n", alarms, metrics, usd(float64(metrics)*p.AlarmMetricMonth.USD), usd(float64(alarms)*p.AlarmMetricMonth.USD),
		usd(p.InternetOutGB.USD), answers, APIAnswerBytes, usd(Visitors*answers*APIAnswerBytes/gb*p.InternetOutGB.USD))
}

// readmeCost is infra/README.md's "What it costs": every configuration,
// and the default's idle bill line by line.
func readmeCost(priced []Priced, def Priced) string {
	dashboards := itemUSD(def.R.Idle, "CloudWatch dashboards")
	return configurationsTable(priced) + fmt.Sprintf("\nThe default configuration idle, a month (%d hours):\n\n%s\n"+
		"Where the dashboard is free (an account's first three), idle is %s. Per million visitors the default adds %s: "+
		"%d requests each through API Gateway and Lambda, their logs, the cache's ECPUs (docs/cost.md, line by line).\n",
		HoursPerMonth, mdTable([]string{"item", "a month", "how"}, append(itemRows(def.R.Idle), []string{"**total**", "**" + usd(def.R.IdleMonthlyUSD) + "**", ""})),
		usd(def.R.IdleMonthlyUSD-dashboards), usd(def.R.PerMillionUSD), def.R.RequestsPerVisitor)
}

// sfnBatches is what one admit invocation would run inside a Step Functions
// Express loop (about a second of batches).
const sfnBatches = 10

// admissionDoc compares the chosen admission (one invocation a minute that
// loops for the minute) with a Step Functions Express loop, for a month
// with someone waiting all month, from the measured busy invocation.
func admissionDoc(def Priced) string {
	p, fns := USEast1, def
	period, _ := roleSchedule(fns.Inv).PeriodSeconds()
	admit, _ := fns.Inv.FunctionFor("schedule")
	runs := HoursPerMonth * 3600 / period
	busy := runs * def.M.BusyAdmit.Seconds
	gbs := busy * admit.MemoryGB()
	lambda := gbs * p.lambdaGBSecond(admit.Arch).USD
	loops := math.Ceil(float64(def.M.Config.AdmitBatches) / sfnBatches)
	sfnGBs := busy * 0.0625 // Express bills 64 MB at least
	sfnReq, sfnDur := runs*p.StepFunctionsExpressRequest.USD, sfnGBs*p.StepFunctionsExpressGBSecond.USD
	rows := [][]string{
		{"schedule", thousands(runs) + " rule firings: no charge for scheduled rules", "same"},
		{"Step Functions requests", "—", fmt.Sprintf("%s executions × $%.2f / 1 M = **%s**", thousands(runs), p.StepFunctionsExpressRequest.USD*1e6, usd(sfnReq))},
		{"Step Functions duration", "—", fmt.Sprintf("%s s × 0.0625 GB (64 MB minimum) = %s GB-s × $%.8f = **%s**", thousands(busy), thousands(sfnGBs),
			p.StepFunctionsExpressGBSecond.USD, usd(sfnDur))},
		{"Lambda requests", fmt.Sprintf("%s × $%.2f / 1 M = **%s**", thousands(runs), p.LambdaRequest.USD*1e6, usd(runs*p.LambdaRequest.USD)),
			fmt.Sprintf("%.0f × %s = %s × $%.2f / 1 M = **%s**", loops, thousands(runs), thousands(loops*runs), p.LambdaRequest.USD*1e6, usd(loops*runs*p.LambdaRequest.USD))},
		{"Lambda duration", fmt.Sprintf("%s s × %g GB = %s GB-s × $%.10f = **%s**", thousands(busy), admit.MemoryGB(), thousands(gbs),
			p.lambdaGBSecond(admit.Arch).USD, usd(lambda)), fmt.Sprintf("the same %s s of batches: **%s**", thousands(busy), usd(lambda))},
		{"**total**", "**" + usd(runs*p.LambdaRequest.USD+lambda) + " / month**", "**" + usd(sfnReq+sfnDur+loops*runs*p.LambdaRequest.USD+lambda) + " / month**"},
	}
	return fmt.Sprintf("Monthly cost, %s list prices, the %d MB %s admit function as busy as it can be (someone waiting all month: "+
		"each invocation runs its %d batches, %.2f s measured), %d hours a month:\n\n%s", p.Region, admit.MemoryMB, admit.Arch,
		def.M.BusyAdmit.Batches, def.M.BusyAdmit.Seconds, HoursPerMonth,
		mdTable([]string{"", "per-minute invocation looping for the minute (chosen)", "Step Functions Express loop"}, rows))
}
