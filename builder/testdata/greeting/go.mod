module example.com/greeting

go 1.26
